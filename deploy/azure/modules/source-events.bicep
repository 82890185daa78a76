// One watched storage account's `Microsoft.Storage.BlobCreated` events, delivered by Event Grid
// to the sources queue of sheetrelay's own account (docs/sources.md). Deployed in the watched
// account's resource group. Every blob of the account is announced: the worker keeps the events
// of blobs some source watches (its container and prefix) and drops the others, so one
// subscription serves any number of sources on the account.

param watchedAccountName string
param location string
@description('Resource id of sheetrelay\'s storage account, which holds the queue.')
param queueAccountId string
param queueName string

resource watched 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: watchedAccountName
}

resource topic 'Microsoft.EventGrid/systemTopics@2024-06-01-preview' = {
  name: '${watchedAccountName}-sheetrelay'
  location: location
  properties: {
    source: watched.id
    topicType: 'Microsoft.Storage.StorageAccounts'
  }
}

resource subscription 'Microsoft.EventGrid/systemTopics/eventSubscriptions@2024-06-01-preview' = {
  parent: topic
  name: 'sheetrelay-sources'
  properties: {
    eventDeliverySchema: 'EventGridSchema'
    filter: {
      includedEventTypes: [ 'Microsoft.Storage.BlobCreated' ]
    }
    destination: {
      endpointType: 'StorageQueue'
      properties: {
        resourceId: queueAccountId
        queueName: queueName
        // Kept until read (-1: no expiry); the worker deletes each once recorded.
        queueMessageTimeToLiveInSeconds: -1
      }
    }
    retryPolicy: {
      maxDeliveryAttempts: 30
      eventTimeToLiveInMinutes: 1440
    }
  }
}
